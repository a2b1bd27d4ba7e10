"""Where things live on disk: paths, atomic writes, checkpoints and the one result cache."""

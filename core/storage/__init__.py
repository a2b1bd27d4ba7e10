"""What is kept on disk: checkpoints, the one result cache and the class database."""

"""The class's drawings: students' submitted digits, stored and evaluated.

* :mod:`core.classroom.store`: the one storage module: SQLite by default (WAL mode), a
  configurable database URL (``BNN_CLASS_DB``; PostgreSQL for several app replicas), each
  submission stored exactly once by its client-side UUID; a drawing's record and checks in
  :mod:`core.classroom.drawings`;
* :mod:`core.classroom.report`: each model's accuracy, confusion matrix, reliability bins and
  "I don't know" drawings on a class's drawings, assembled from per-drawing predictions;
* :mod:`core.classroom.live`: the Class page's evaluation, drawing by drawing: each model's
  predictions kept per drawing for a server, so a refresh runs the models on new drawings only;
* :mod:`core.classroom.export`: the set as CSV + PNG files in a zip, or an MNIST-format IDX pair;
* :mod:`core.classroom.teacher`: exporting and clearing a class, for the teacher only.
* :mod:`core.classroom.join`: the address students join at (``BNN_PUBLIC_URL``, else one their
  machines can reach) and the QR code of their link.
"""

from core.classroom.drawings import ClassDrawings, Drawing, check_class_code, new_class_code
from core.classroom.export import csv_png_zip, idx_pair, idx_zip
from core.classroom.live import LiveReport, PredictionCache, live_reports
from core.classroom.report import ModelReport, Predictions, class_report, model_report
from core.classroom.store import ClassFullError, ClassStore
from core.storage.database_errors import DB_ENV, DatabaseError
from core.storage.database_url import database_url

__all__ = [
    "DB_ENV",
    "ClassDrawings",
    "ClassFullError",
    "ClassStore",
    "DatabaseError",
    "Drawing",
    "LiveReport",
    "ModelReport",
    "PredictionCache",
    "Predictions",
    "check_class_code",
    "class_report",
    "csv_png_zip",
    "database_url",
    "idx_pair",
    "idx_zip",
    "live_reports",
    "model_report",
    "new_class_code",
]

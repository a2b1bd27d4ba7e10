"""What the tests and the tools (``benchmarks/``, ``scripts/``) share to drive the lab from
outside: a served app and headless Chromium (:mod:`harness.browser`), a class of students in
them (:mod:`harness.classroom`), throw-away PostgreSQL and Ray servers (:mod:`harness.cluster`),
drawings as the Draw page's canvas sends them (:mod:`harness.drawing`), and the documentation
build's reading of docstrings (:mod:`harness.docstring_roles`). Neither the lab nor its tools
import ``tests/``."""

import os
import sys

sys.path.insert(0, os.path.dirname(__file__))
from lit_inprocess import InProcessShTest  # noqa: E402

config.name = "bulkred"
# bulkred-opt and filecheck run inside lit's workers (tests/filecheck/lit_inprocess.py);
# BULKRED_LIT_SUBPROCESS=1 runs every RUN line as real processes (lit's ShTest)
config.test_format = InProcessShTest()
config.suffixes = [".mlir"]
config.test_source_root = os.path.dirname(__file__)
config.excludes = ["lit.cfg.py", "lit_inprocess.py", "Inputs"]
config.environment["PATH"] = os.environ.get("PATH", "")
for var in ("PYTHONPATH", "HOME", "VIRTUAL_ENV"):
    if var in os.environ:
        config.environment[var] = os.environ[var]

import os

import lit.formats

config.name = "bulkred"
config.test_format = lit.formats.ShTest()
config.suffixes = [".mlir"]
config.test_source_root = os.path.dirname(__file__)
config.excludes = ["lit.cfg.py", "Inputs"]
config.environment["PATH"] = os.environ.get("PATH", "")
for var in ("PYTHONPATH", "HOME", "VIRTUAL_ENV"):
    if var in os.environ:
        config.environment[var] = os.environ[var]

"""Read the SASS of a cubin with nvdisasm from the pip package ``nvidia-cuda-nvdisasm``
(no CUDA toolkit needed). Used to check what ptxas made of our PTX, e.g. that the
sm100_packed sum became ``FADD2`` instructions with its accumulator in registers."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile
from collections import Counter
from pathlib import Path


class DisassemblerUnavailable(RuntimeError):
    """nvdisasm is neither installed from pip nor on PATH."""


def nvdisasm_path() -> str:
    """The nvdisasm executable: the ``nvidia-cuda-nvdisasm`` wheel's, else one on PATH."""
    try:
        import nvidia

        for root in nvidia.__path__:
            for cand in sorted(Path(root).glob("cu*/bin/nvdisasm")) + [Path(root) / "cuda_nvdisasm/bin/nvdisasm"]:
                if cand.is_file() and os.access(cand, os.X_OK):
                    return str(cand)
    except ImportError:
        pass
    found = shutil.which("nvdisasm")
    if found:
        return found
    raise DisassemblerUnavailable(
        "nvdisasm not found: install the pip package nvidia-cuda-nvdisasm (pip install 'bulkred[test]')"
    )


def disassemble(cubin: bytes) -> str:
    """The SASS text of ``cubin`` (``nvdisasm -c``)."""
    with tempfile.NamedTemporaryFile(suffix=".cubin") as f:
        f.write(cubin)
        f.flush()
        r = subprocess.run([nvdisasm_path(), "-c", f.name], capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError(f"nvdisasm failed: {r.stderr.strip()}")
    return r.stdout


def opcode_counts(sass: str) -> Counter[str]:
    """How often each SASS opcode (with its modifiers, e.g. ``FADD2.FTZ``) occurs."""
    return Counter(re.findall(r"/\*[0-9a-f]{4,}\*/\s+(?:@!?U?P\w+\s+)?([A-Z][A-Z0-9_]*(?:\.[A-Z0-9_]+)*)", sass))

"""Times `gpu-advisor --help` and checks it imports no scikit-learn, Textual or plotting library."""

from __future__ import annotations

import statistics
import subprocess
import sys
import time
from pathlib import Path

REPEATS = 10


def main() -> None:
    exe = Path(sys.executable).with_name("gpu-advisor")
    for args in (["--help"], ["recommend", "--help"]):
        times = []
        for _ in range(REPEATS):
            t = time.perf_counter()
            subprocess.run([str(exe), *args], capture_output=True, check=True)
            times.append(time.perf_counter() - t)
        print(f"gpu-advisor {' '.join(args)}: median {statistics.median(times):.3f} s, min {min(times):.3f} s")
    code = ("import sys\nfrom advisor.cli.main import main\ntry:\n    main(['--help'])\nexcept SystemExit:\n    pass\n"
            "print(sorted(m for m in ('sklearn', 'textual', 'numpy', 'plotext', 'pydantic') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    print(f"heavy modules imported by --help: {out.strip().splitlines()[-1]}")


if __name__ == "__main__":
    main()

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CTS_DIR = ROOT / "tests" / "data" / "nnapi-cts"
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

"""Detection operations: box decoding and NMS (reference.py), SSD post-processing (ssd.py), ROI
align and pooling (roi.py), heatmap keypoints (keypoint.py) and what they share (utils.py)."""
from . import keypoint, reference, roi, ssd, utils  # noqa: F401  (registration)

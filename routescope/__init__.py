"""routescope: which MoE top-k routing path runs during decode, and where OEA fits."""

__version__ = "0.1.0"

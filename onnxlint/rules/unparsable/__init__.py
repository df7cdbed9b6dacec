"""OLX0xx: files the engine cannot check (reported by the engine itself, not by a walk)."""

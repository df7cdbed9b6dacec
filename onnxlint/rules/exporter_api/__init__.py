"""OLX4xx: removed, ignored and deprecated exporter APIs and arguments."""

"""A toy vision package: a classifier and a small detector head."""

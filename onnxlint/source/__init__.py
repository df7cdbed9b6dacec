"""Source text: files, blocks parsed once, the walk, positions, notebooks, fixes. Imports core."""

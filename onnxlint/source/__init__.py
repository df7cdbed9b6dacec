"""Source text: files, blocks parsed once (libcst's nodes built without validation), the walk,
positions, notebooks, fixes. Imports core."""

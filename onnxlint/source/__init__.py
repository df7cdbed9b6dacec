"""Source text: files, parsed blocks, the walk, positions, notebooks, fixes. Imports core.

Blocks are parsed with libcst's nodes built without validation (`fast_nodes`)."""

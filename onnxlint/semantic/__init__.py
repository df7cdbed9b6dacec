"""What one file says, alone: index, imports, modules, reachability, kinds. Imports core, source."""

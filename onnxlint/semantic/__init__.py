"""What one file says, alone: index, imports, modules, reachability, kinds. Imports source, core."""

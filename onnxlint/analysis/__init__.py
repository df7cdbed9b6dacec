"""What a file means for export: export data-flow, never-exported code. Imports semantic, below."""

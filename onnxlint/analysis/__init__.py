"""What a file means for export: the export data-flow, never-exported code. Imports semantic."""

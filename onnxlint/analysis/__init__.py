"""What a file means for export: export data-flow, never-exported code. Imports semantic, below.

Its modules, bottom up; each imports only modules listed before it (tests/test_layers.py):

- `file`: `FileAnalysis`, the facts of one file for one check, and `FileView`, what the
  analyses read of it (a `FileAnalysis` or a rule's `Context`)
- `chains`: the links, across calls and files, that explain a finding
- `scope`: the statements around a node: its scope, those that name or bind a variable
- `layers`: library layers whose training mode changes nothing, from their constructor call
- `modes`: the training mode of a model variable, followed through its scope (`ModeFlow`)
- `exported_model`: the model an export call exports (`ModelRef`): mode, class, `forward`
- `mode_sensitivity`: whether a module class behaves the same in train and eval mode
- `inputs`: how an export call's example inputs are given and named
- `exporter`: which exporter an export call runs, whether it keeps the model's mode, and
  the project functions that export the model they are given (`WrapperCall`)
- `dims`: the dims an export declares dynamic, followed through a function
- `values`: configuration values an export call reads from elsewhere
- `never_exported`: code that no export ever runs (losses, runtime wrappers, dead branches)
"""

"""From files to core records: strict YAML and JSON reading, typed field access, the
preset catalog, config.json families and the cache of validated presets.
"""

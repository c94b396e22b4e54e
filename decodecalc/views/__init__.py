"""Results as reports (one JSON document plus flat records and columns), the renderers
that write them, charts, and the worked-through and listing texts.
"""

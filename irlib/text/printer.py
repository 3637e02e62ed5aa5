"""PLACEHOLDER"""
def astext(node, show_meta_data=True, annotate=None): raise NotImplementedError
def pretty_print(node): return object.__repr__(node)

"""PLACEHOLDER: being written."""
def structural_equal(a, b, map_free_vars=False): raise NotImplementedError
def structural_hash(a, map_free_vars=False): raise NotImplementedError
def assert_structural_equal(a, b, map_free_vars=False): raise NotImplementedError

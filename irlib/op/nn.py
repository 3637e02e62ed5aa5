"""Neural-network ops (``irlib.nn.*``). PLACEHOLDER: being written."""

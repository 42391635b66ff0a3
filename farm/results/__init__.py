"""Records (one measured value each) and the writers that publish them."""

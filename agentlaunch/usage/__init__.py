"""Usage: the meter, pricing, the SQLite store and the reports read from it."""

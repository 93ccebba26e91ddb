"""deniable.server: the Flask app that collects randomized reports."""

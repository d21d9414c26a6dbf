"""Device backends. Importing a backend module registers its ops."""

"""Memory services. Import the module you need (e.g. `memory.services.curated_io`); nothing is loaded here."""

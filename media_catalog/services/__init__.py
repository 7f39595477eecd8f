"""Media catalog services. Import the module you need (e.g. `media_catalog.services.curated_io`)."""

"""Agent services. Import the module you need (`curation`, `access_requests`, ...); nothing is loaded here."""

"""placeflow: bulk place-data ETL against the place-data service, with a faithful sandbox."""

__version__ = "0.1.0"

"""The DuckDB file: the warehouse (migrations, named SQL), the writer's connection (let go
while the run waits on the service), the file's making (dbfile) and a full disk (diskfull)."""

"""The Spark engine: parse response logs on a Spark cluster into the Parquet lake ``promptops export`` writes,
and compute rates, gates and reports over that lake on Spark (docs/spark.md).

Optional: needs the ``spark`` extra (pyspark) and Java 17+. Modules: ``session`` (starting Spark, the one-line
error when it cannot), ``setup`` (the parser setup as data for the executors), ``lake`` (segment output sets
written atomically, the commit markers), ``ingest`` (the job), ``views`` (the store's views and queries in
Spark SQL, generated from the DuckDB definitions), ``options`` (the CLI's --engine and --spark-master),
``submit`` (the spark-submit entry point). Nothing here is imported unless the Spark engine is asked for.
"""

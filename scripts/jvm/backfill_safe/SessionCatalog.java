package backfill_safe;

import java.io.IOException;
import java.io.UncheckedIOException;
import org.apache.hadoop.fs.FileStatus;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.iceberg.spark.SparkSessionCatalog;
import org.apache.iceberg.spark.source.SparkView;
import org.apache.iceberg.spark.source.SparkTable;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.catalyst.analysis.NoSuchTableException;
import org.apache.spark.sql.catalyst.analysis.NoSuchViewException;
import org.apache.spark.sql.connector.catalog.CatalogPlugin;
import org.apache.spark.sql.connector.catalog.FunctionCatalog;
import org.apache.spark.sql.connector.catalog.Identifier;
import org.apache.spark.sql.connector.catalog.SupportsNamespaces;
import org.apache.spark.sql.connector.catalog.Table;
import org.apache.spark.sql.connector.catalog.TableCatalog;
import org.apache.spark.sql.connector.catalog.View;
import org.apache.spark.sql.connector.catalog.ViewCatalog;

/**
 * Iceberg's session catalog, except that DROP TABLE of a table that is not Iceberg's (a plain
 * Parquet, ORC or CSV table of the same metastore) is Spark's own drop: a managed table's
 * folder is deleted with its metastore entry.
 *
 * <p>Iceberg's SparkSessionCatalog (1.10) sends every drop to its Hive catalog first, which
 * removes the metastore entry of any table, Iceberg or not, and never its data; the plain
 * table's folder stays behind, and the next `create table ... using parquet` of the same name
 * fails with LOCATION_ALREADY_EXISTS (apache/iceberg issue 12790, unmerged PR 14140). dbt-spark
 * drops a Parquet table before it builds it again, so every plain table of a dbt project
 * failed its second build on this profile. Iceberg tables are dropped as before (their files
 * kept: DROP TABLE ... PURGE deletes them).
 *
 * <p>A view of this catalog is Iceberg's, whose metadata files live in the folder a table of
 * the same name would take; Iceberg's DROP VIEW deletes the files and leaves the folders, so a view that became
 * a plain table (a dbt model whose materialization changed) failed the same way. Here DROP VIEW
 * also deletes what is left of the dropped view's folder when it holds no other file.
 *
 * <p>The profiles set it as spark_catalog (scripts/bootstrap.sh compiles it).
 */
public class SessionCatalog<T extends TableCatalog & FunctionCatalog & SupportsNamespaces & ViewCatalog>
    extends SparkSessionCatalog<T> {
  private TableCatalog spark;

  @Override
  public void setDelegateCatalog(CatalogPlugin sparkSessionCatalog) {
    super.setDelegateCatalog(sparkSessionCatalog);
    spark = (TableCatalog) sparkSessionCatalog;
  }

  @Override
  public boolean dropTable(Identifier ident) {
    Table table;
    try {
      table = loadTable(ident);
    } catch (NoSuchTableException missing) {
      return false;
    }
    if (table instanceof SparkTable || spark == null) {
      return super.dropTable(ident);
    }
    return spark.dropTable(ident);
  }

  @Override
  public boolean dropView(Identifier ident) {
    String location = icebergViewLocation(ident);
    boolean dropped = super.dropView(ident);
    if (dropped && location != null) {
      deleteViewMetadata(new Path(location));
    }
    return dropped;
  }

  /** The folder of an Iceberg view of this catalog, or null (no such view, or not Iceberg's). */
  private String icebergViewLocation(Identifier ident) {
    try {
      View view = loadView(ident);
      return view instanceof SparkView ? ((SparkView) view).view().location() : null;
    } catch (NoSuchViewException notAView) {
      return null;
    }
  }

  /** Deletes `location/metadata/*.metadata.json` (and their checksums), then each of the two folders if empty. */
  private static void deleteViewMetadata(Path location) {
    try {
      FileSystem fs = location.getFileSystem(SparkSession.active().sparkContext().hadoopConfiguration());
      Path metadata = new Path(location, "metadata");
      if (fs.exists(metadata)) {
        for (FileStatus file : fs.listStatus(metadata)) {
          String name = file.getPath().getName();
          if (file.isFile() && (name.endsWith(".metadata.json") || name.endsWith(".metadata.json.crc"))) {
            fs.delete(file.getPath(), false);
          }
        }
      }
      for (Path folder : new Path[] {metadata, location}) {
        if (fs.exists(folder) && fs.listStatus(folder).length == 0) {
          fs.delete(folder, true);  // empty: nothing but the folder goes
        }
      }
    } catch (IOException e) {
      throw new UncheckedIOException("dropped view's metadata at " + location + " not deleted", e);
    }
  }
}

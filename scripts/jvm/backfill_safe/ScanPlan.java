package backfill_safe;

import java.lang.reflect.Method;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashSet;
import java.util.List;
import java.util.TreeSet;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan;
import org.apache.spark.sql.connector.read.InputPartition;
import org.apache.spark.sql.execution.CommandExecutionMode;
import org.apache.spark.sql.execution.QueryExecution;
import org.apache.spark.sql.execution.SparkPlan;
import org.apache.spark.sql.execution.adaptive.AdaptiveSparkPlanExec;
import org.apache.spark.sql.execution.adaptive.QueryStageExec;
import org.apache.spark.sql.execution.columnar.InMemoryTableScanExec;
import org.apache.spark.sql.execution.exchange.ReusedExchangeExec;
import org.apache.spark.sql.execution.datasources.v2.BatchScanExec;
import scala.collection.Seq;

/**
 * What a SQL statement will read, table by table, before it runs: the data files, delete files
 * and partitions Iceberg plans for each of its scans under the filters pushed to it, with those
 * filters. The statement is parsed and planned in the calling session (its temporary views
 * resolve), never executed: a MERGE writes nothing. Planning a scan reads the table's manifests,
 * as the run will; filters applied only at run time (dynamic pruning of a join) are listed, not
 * applied, so a run may read fewer files than planned here, never more.
 *
 * <p>Called from SQL on the driver, by `pipeline explain` (macro explain_statement):
 * {@code select java_method('backfill_safe.ScanPlan', 'of', '<statement>') from values (1)}.
 * The optimizer evaluates a projection over VALUES (ConvertToLocalRelation) with the query's own
 * session active, so the statement sees that session's temporary views, also on a Spark Thrift
 * Server (one session per connection).
 *
 * <p>The answer is JSON: {@code {"scans": [{"table", "branch", "filters", "runtime_filters",
 * "data_files", "delete_files", "bytes", "partitioned", "partitions": [partition paths, sorted]}]}},
 * or {@code {"error": ...}} when the statement cannot be planned.
 */
public final class ScanPlan {
  private ScanPlan() {}

  /** The planned scans of {@code statement}, as JSON; an error object instead of an exception. */
  public static String of(String statement) {
    try {
      return plan(statement);
    } catch (Throwable failed) {  // reported by the caller, with the statement's model
      Throwable cause = failed;
      while (cause.getCause() != null && cause.getCause() != cause) {
        cause = cause.getCause();
      }
      return "{\"error\": " + Json.quote("backfill_safe.ScanPlan failed: " + cause) + "}";
    }
  }

  private static String plan(String statement) throws Exception {
    SparkSession session = SparkSession.active();
    LogicalPlan parsed = session.sessionState().sqlParser().parsePlan(statement);
    QueryExecution execution = session.sessionState().executePlan(parsed, CommandExecutionMode.SKIP());
    List<BatchScanExec> scans = new ArrayList<>();
    collect(execution.executedPlan(), scans);
    StringBuilder out = new StringBuilder("{\"scans\": [");
    for (int i = 0; i < scans.size(); i++) {
      out.append(i == 0 ? "" : ", ").append(describe(scans.get(i)));
    }
    return out.append("]}").toString();
  }

  /** Every v2 batch scan of the plan: children, subqueries, the plan adaptive execution runs
   * (the initial one before it ran, the final one after), its query stages, reused exchanges
   * and the plans that filled cached views. */
  static void collect(SparkPlan plan, List<BatchScanExec> scans) {
    if (plan instanceof BatchScanExec) {
      scans.add((BatchScanExec) plan);
    }
    if (plan instanceof AdaptiveSparkPlanExec) {
      collect(((AdaptiveSparkPlanExec) plan).executedPlan(), scans);
    }
    if (plan instanceof QueryStageExec) {
      collect(((QueryStageExec) plan).plan(), scans);
    }
    if (plan instanceof ReusedExchangeExec) {
      collect(((ReusedExchangeExec) plan).child(), scans);
    }
    if (plan instanceof InMemoryTableScanExec) {  // a cached view: the plan that filled it
      collect(((InMemoryTableScanExec) plan).relation().cachedPlan(), scans);
    }
    Seq<SparkPlan> children = plan.children();
    for (int i = 0; i < children.size(); i++) {
      collect(children.apply(i), scans);
    }
    Seq<SparkPlan> subqueries = plan.subqueries();
    for (int i = 0; i < subqueries.size(); i++) {
      collect(subqueries.apply(i), scans);
    }
  }

  /** The scan's table, as schema.table for a table of the session catalog. */
  static String tableOf(BatchScanExec scan) {
    String table = scan.table().name();
    return table.startsWith("spark_catalog.") ? table.substring("spark_catalog.".length()) : table;
  }

  /** What Iceberg planned for one scan under its pushed filters. */
  static final class Planned {
    // distinct files: Iceberg splits a large data file into several tasks, and a delete file
    // applies to several data files; counted per task, a scan could "read" more files than its
    // table holds
    final HashSet<String> dataFiles = new HashSet<>();
    final HashSet<String> deleteFiles = new HashSet<>();
    long bytes;
    boolean partitioned;
    final TreeSet<String> partitions = new TreeSet<>();  // paths, e.g. order_date=2025-01-10
  }

  /** Whether the scan's table is an Iceberg table with a partition spec (its current one). */
  static boolean partitionedTable(BatchScanExec scan) throws Exception {
    // Spark's table of a row-level operation (RowLevelOperationTable) wraps Iceberg's
    // SparkTable, which wraps the Iceberg table: unwrapped until one has a spec
    Object table = scan.table();
    Method spec = method(table, "spec");
    for (int depth = 0; spec == null && depth < 3; depth++) {
      Method inner = method(table, "table");
      if (inner == null) {
        return false;
      }
      table = inner.invoke(table);
      spec = method(table, "spec");
    }
    if (spec == null) {
      return false;
    }
    Object current = spec.invoke(table);
    return !(Boolean) method(current, "isUnpartitioned").invoke(current);
  }

  /** The data files, delete files, bytes and partitions Iceberg planned for the scan (its
   * input partitions, computed once per scan: free after it ran); null for a scan that is not
   * Iceberg's. */
  static Planned planned(BatchScanExec scan) throws Exception {
    Planned planned = new Planned();
    planned.partitioned = partitionedTable(scan);
    Seq<InputPartition> inputs = scan.inputPartitions();
    for (int i = 0; i < inputs.size(); i++) {
      InputPartition input = inputs.apply(i);
      Method taskGroup = method(input, "taskGroup");
      if (taskGroup == null) {  // not an Iceberg scan: its splits are all it tells
        return null;
      }
      Object group = taskGroup.invoke(input);
      for (Object task : (Collection<?>) method(group, "tasks").invoke(group)) {
        Method file = method(task, "file");
        if (file == null) {
          continue;
        }
        Object dataFile = file.invoke(task);
        planned.dataFiles.add(location(dataFile));
        planned.bytes += ((Number) method(task, "length").invoke(task)).longValue();
        for (Object delete : (Collection<?>) method(task, "deletes").invoke(task)) {
          planned.deleteFiles.add(location(delete));
        }
        Object spec = method(task, "spec").invoke(task);
        if (!(Boolean) method(spec, "isUnpartitioned").invoke(spec)) {
          Object values = method(dataFile, "partition").invoke(dataFile);
          for (Method candidate : spec.getClass().getMethods()) {
            if (candidate.getName().equals("partitionToPath") && candidate.getParameterCount() == 1) {
              planned.partitions.add((String) candidate.invoke(spec, values));
              break;
            }
          }
        }
      }
    }
    return planned;
  }

  /** A data or delete file's location (ContentFile.location(), path() before Iceberg 1.7). */
  static String location(Object contentFile) throws Exception {
    Method location = method(contentFile, "location");
    return String.valueOf((location != null ? location : method(contentFile, "path")).invoke(contentFile));
  }

  private static String describe(BatchScanExec scan) throws Exception {
    String description = scan.scan().description();
    Planned planned = planned(scan);
    StringBuilder out = new StringBuilder("{\"table\": ").append(Json.quote(tableOf(scan)));
    out.append(", \"iceberg\": ").append(description.contains("(branch="));
    out.append(", \"branch\": ").append(Json.group(ScanLog.BRANCH, description));
    out.append(", \"filters\": ").append(Json.group(ScanLog.FILTERS, description + ", groupedBy="));
    out.append(", \"runtime_filters\": ").append(
        scan.runtimeFilters().isEmpty() ? "null" : Json.quote(scan.runtimeFilters().mkString(", ")));
    out.append(", \"data_files\": ").append(planned == null ? 0 : planned.dataFiles.size());
    out.append(", \"delete_files\": ").append(planned == null ? 0 : planned.deleteFiles.size());
    out.append(", \"bytes\": ").append(planned == null ? 0 : planned.bytes);
    out.append(", \"partitioned\": ").append(planned != null && planned.partitioned);
    out.append(", \"partitions\": ").append(Json.list(planned == null ? new TreeSet<String>() : planned.partitions));
    return out.append("}").toString();
  }

  /** A public no-argument method of the object's class or interfaces, or null. */
  static Method method(Object target, String name) {
    for (Method candidate : target.getClass().getMethods()) {
      if (candidate.getName().equals(name) && candidate.getParameterCount() == 0) {
        candidate.setAccessible(true);
        return candidate;
      }
    }
    return null;
  }
}

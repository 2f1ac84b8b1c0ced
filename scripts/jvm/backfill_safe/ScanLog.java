package backfill_safe;

import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.apache.spark.SparkContext;
import org.apache.spark.SparkEnv;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.execution.ui.SQLAppStatusStore;
import org.apache.spark.sql.execution.ui.SQLExecutionUIData;
import org.apache.spark.sql.execution.ui.SQLPlanMetric;
import org.apache.spark.sql.execution.ui.SparkPlanGraphNode;
import scala.Option;
import scala.collection.Seq;

/**
 * What the SQL statements of this Spark application read, table by table: Iceberg's scan
 * metrics (data files planned and skipped, manifests, bytes, file splits read) and the rows each
 * scan returned, from the SQL status store Spark keeps on the driver (the figures of its web UI;
 * kept whether or not the UI runs).
 *
 * <p>Called from SQL on the driver, by the on-run-end hook `record_scans`:
 * {@code select java_method('backfill_safe.ScanLog', 'since', '<epoch ms>') from values (1)}.
 * A projection over a VALUES list is evaluated by the optimizer (ConvertToLocalRelation), so on
 * the driver, where the status store lives; elsewhere (an executor) this answers with an error
 * object instead of figures. Statements are those submitted at or after the given time, their
 * listener events processed first (the store is filled asynchronously).
 *
 * <p>The answer is JSON: {@code {"oldest": ms of the oldest statement still retained
 * (spark.sql.ui.retainedExecutions), "first_execution": its id (0 unless some were evicted),
 * "scans": [{"execution", "submitted", "completed", "node_id"
 * (from dbt's query comment when the statement text is the description, as on a Thrift Server),
 * "table", "iceberg", "branch", "filters", "runtime_filters", "partitions" (the partition paths
 * the statement's scans of the table planned, from ScanPartitions; null when unknown or
 * unpartitioned), "metrics": {name: value}}]}}.
 */
public final class ScanLog {
  static final Pattern BRANCH = Pattern.compile("\\(branch=([^)]*)\\)");
  static final Pattern FILTERS = Pattern.compile("\\[filters=(.*?), groupedBy=");
  private static final Pattern RUNTIME = Pattern.compile("RuntimeFilters: \\[(.*)\\]");
  private static final Pattern NODE_ID = Pattern.compile("\"node_id\": \"([^\"]+)\"");
  private static final long WAIT_MS = 30_000L;

  private ScanLog() {}

  /** The scans of the statements submitted at or after {@code epochMillis}, as JSON; an
   * {@code {"error": ...}} object instead of an exception when they cannot be read. */
  public static String since(String epochMillis) {
    try {
      return read(Long.parseLong(epochMillis.trim()));
    } catch (Throwable failed) {  // a diagnostic never fails the statement that asked for it
      return "{\"error\": " + Json.quote("backfill_safe.ScanLog failed: " + failed) + "}";
    }
  }

  private static String read(long since) {
    SparkEnv env = SparkEnv.get();
    if (env == null || !"driver".equals(env.executorId())) {
      return "{\"error\": \"backfill_safe.ScanLog ran outside the Spark driver\"}";
    }
    Option<SparkSession> session = SparkSession.getActiveSession();
    if (session.isEmpty()) {
      session = SparkSession.getDefaultSession();
    }
    if (session.isEmpty()) {
      return "{\"error\": \"backfill_safe.ScanLog found no Spark session\"}";
    }
    SparkContext context = session.get().sparkContext();
    // the status store is filled by a listener: let it take in what was posted so far
    try {
      context.listenerBus().waitUntilEmpty(WAIT_MS);
    } catch (java.util.concurrent.TimeoutException busy) {
      return "{\"error\": \"Spark's listener bus did not empty in " + WAIT_MS + " ms\"}";
    }
    SQLAppStatusStore store = session.get().sharedState().statusStore();
    Seq<SQLExecutionUIData> executions = store.executionsList();
    StringBuilder out = new StringBuilder("{\"oldest\": ");
    long oldest = Long.MAX_VALUE;
    long firstId = Long.MAX_VALUE;
    for (int i = 0; i < executions.size(); i++) {
      oldest = Math.min(oldest, executions.apply(i).submissionTime());
      firstId = Math.min(firstId, executions.apply(i).executionId());
    }
    out.append(oldest == Long.MAX_VALUE ? "null" : Long.toString(oldest));
    // execution ids start at 0 in every application: a first id above 0 means some were evicted
    out.append(", \"first_execution\": ").append(firstId == Long.MAX_VALUE ? "null" : Long.toString(firstId));
    out.append(", \"scans\": [");
    boolean first = true;
    for (int i = 0; i < executions.size(); i++) {
      SQLExecutionUIData execution = executions.apply(i);
      if (execution.submissionTime() < since) {
        continue;
      }
      long id = execution.executionId();
      scala.collection.immutable.Map<Object, String> values = store.executionMetrics(id);
      Seq<SparkPlanGraphNode> nodes = store.planGraph(id).allNodes();
      for (int j = 0; j < nodes.size(); j++) {
        SparkPlanGraphNode node = nodes.apply(j);
        if (!node.name().startsWith("BatchScan ")) {
          continue;
        }
        out.append(first ? "" : ", ");
        first = false;
        out.append("{\"execution\": ").append(id);
        out.append(", \"submitted\": ").append(execution.submissionTime());
        Option<java.util.Date> completed = execution.completionTime();
        out.append(", \"completed\": ").append(completed.isDefined() ? Long.toString(completed.get().getTime()) : "null");
        Matcher nodeId = NODE_ID.matcher(execution.description() == null ? "" : execution.description());
        out.append(", \"node_id\": ").append(nodeId.find() ? Json.quote(nodeId.group(1)) : "null");
        String table = node.name().substring("BatchScan ".length()).trim();
        if (table.startsWith("spark_catalog.")) {
          table = table.substring("spark_catalog.".length());
        }
        out.append(", \"table\": ").append(Json.quote(table));
        String desc = node.desc() == null ? "" : node.desc();
        out.append(", \"iceberg\": ").append(desc.contains("(branch="));
        out.append(", \"branch\": ").append(Json.group(BRANCH, desc));
        out.append(", \"filters\": ").append(Json.group(FILTERS, desc));
        out.append(", \"runtime_filters\": ").append(Json.group(RUNTIME, desc));
        java.util.TreeSet<String> partitions = ScanPartitions.of(id, table.toLowerCase(java.util.Locale.ROOT));
        out.append(", \"partitions\": ").append(partitions == null ? "null" : Json.list(partitions));
        out.append(", \"metrics\": {");
        Seq<SQLPlanMetric> metrics = node.metrics();
        boolean firstMetric = true;
        for (int k = 0; k < metrics.size(); k++) {
          SQLPlanMetric metric = metrics.apply(k);
          Option<String> value = values.get(metric.accumulatorId());
          Long number = value.isDefined() ? number(value.get()) : null;
          if (number == null) {
            continue;
          }
          out.append(firstMetric ? "" : ", ").append(Json.quote(metric.name())).append(": ").append(number);
          firstMetric = false;
        }
        out.append("}}");
      }
    }
    return out.append("]}").toString();
  }

  /** A metric's value as Spark prints it ("1,234" for sums; sizes and timings of Iceberg's
   * custom metrics are plain numbers); null when it is not one number (a timing summary). */
  private static Long number(String text) {
    String plain = text.trim().replace(",", "");
    try {
      return Long.parseLong(plain);
    } catch (NumberFormatException notOne) {
      return null;
    }
  }
}

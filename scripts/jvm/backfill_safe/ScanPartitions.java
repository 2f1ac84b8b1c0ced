package backfill_safe;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.TreeSet;
import org.apache.spark.SparkContext;
import org.apache.spark.scheduler.SparkListener;
import org.apache.spark.scheduler.SparkListenerEvent;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.execution.QueryExecution;
import org.apache.spark.sql.execution.datasources.v2.BatchScanExec;
import org.apache.spark.sql.execution.ui.SparkListenerSQLExecutionEnd;

/**
 * The partitions each SQL statement's Iceberg scans planned, per statement (SQL execution id)
 * and table: Spark's scan metrics count files, not partitions. A listener on the driver, told of
 * every statement's end with its executed plan, reads the input partitions of each v2 scan (the
 * file tasks Iceberg planned under the pushed filters, already computed by the run) and keeps
 * their partition paths; ScanLog adds them to the scans it reports.
 *
 * <p>Installed once per driver by the on-run-start hook (prepare_framework_run):
 * {@code select java_method('backfill_safe.ScanPartitions', 'install') from values (1)}. Keeps
 * the latest 2,000 statements (record_scans reads them at the end of each dbt invocation).
 */
public final class ScanPartitions extends SparkListener {
  private static final int KEPT = 2_000;
  private static final Map<Long, Map<String, TreeSet<String>>> BY_EXECUTION =
      new LinkedHashMap<Long, Map<String, TreeSet<String>>>() {
        @Override
        protected boolean removeEldestEntry(Map.Entry<Long, Map<String, TreeSet<String>>> eldest) {
          return size() > KEPT;
        }
      };
  private static volatile boolean installed;

  /** Registers the listener on this driver, once; "installed" or an error text. */
  public static synchronized String install() {
    try {
      if (!installed) {
        SparkContext context = SparkSession.active().sparkContext();
        context.addSparkListener(new ScanPartitions());
        installed = true;
      }
      return "installed";
    } catch (Throwable failed) {  // the run goes on without partitions
      return "backfill_safe.ScanPartitions failed: " + failed;
    }
  }

  /** The partition paths the statement's scans of {@code table} planned; null when unknown
   * (not seen, not Iceberg's, or an unpartitioned table). */
  static synchronized TreeSet<String> of(long execution, String table) {
    Map<String, TreeSet<String>> tables = BY_EXECUTION.get(execution);
    return tables == null ? null : tables.get(table);
  }

  @Override
  public void onOtherEvent(SparkListenerEvent event) {
    if (!(event instanceof SparkListenerSQLExecutionEnd)) {
      return;
    }
    SparkListenerSQLExecutionEnd end = (SparkListenerSQLExecutionEnd) event;
    QueryExecution execution = end.qe();
    if (execution == null) {
      return;
    }
    try {
      List<BatchScanExec> scans = new ArrayList<>();
      ScanPlan.collect(execution.executedPlan(), scans);
      Map<String, TreeSet<String>> tables = new TreeMap<>();
      for (BatchScanExec scan : scans) {
        ScanPlan.Planned planned = ScanPlan.planned(scan);
        if (planned != null && planned.partitioned) {
          tables.computeIfAbsent(ScanPlan.tableOf(scan).toLowerCase(java.util.Locale.ROOT),
              t -> new TreeSet<>()).addAll(planned.partitions);
        }
      }
      if (!tables.isEmpty()) {
        synchronized (ScanPartitions.class) {
          BY_EXECUTION.put(end.executionId(), tables);
        }
      }
    } catch (Throwable ignored) {  // a diagnostic never disturbs the listener bus
    }
  }
}

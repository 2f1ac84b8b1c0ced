package backfill_safe;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.attribute.PosixFilePermission;
import java.util.EnumSet;
import java.util.Set;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.hadoop.fs.CreateFlag;
import org.apache.hadoop.fs.FSDataOutputStream;
import org.apache.hadoop.fs.LocalFileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.fs.RawLocalFileSystem;
import org.apache.hadoop.fs.permission.FsPermission;
import org.apache.hadoop.util.Progressable;

/**
 * Hadoop's local file system (file://), checksums included, whose permission changes go
 * through java.nio instead of a forked `chmod`.
 *
 * <p>Without Hadoop's native library (pip's pyspark ships none), RawLocalFileSystem sets the
 * permission of every file and directory it creates by running `chmod` in a new process: two
 * per data file (the file and its .crc). An Iceberg MERGE of a day's corrections writes 366
 * files at 20M lines, so about 730 processes forked from the Spark driver's JVM; writing 183
 * small files took 1.7-1.9 s that way and 0.5-0.7 s with this class (docs/benchmarks/history.md).
 * The embedded target sets it as fs.file.impl (profiles/profiles.yml); scripts/bootstrap.sh
 * compiles it. Where the file system has no POSIX permissions, it falls back to Hadoop's way.
 *
 * <p>For the tests, a full disk can be simulated under one folder (Raw.DISK_FULL_UNDER): the
 * statement writing there fails part-way, as it would on a real device.
 */
public class NioLocalFileSystem extends LocalFileSystem {
  public NioLocalFileSystem() {
    super(new Raw());
  }

  /** RawLocalFileSystem with setPermission through java.nio. */
  public static class Raw extends RawLocalFileSystem {
    /**
     * A full disk, simulated for the tests: while this JVM system property names a folder (an
     * absolute path), creating a file under it fails with "No space left on device" once
     * DISK_FULL_AFTER_FILES (default 0) files were created there since the folder was named
     * (a file created while the property is unset restarts the count). Unset, nothing changes
     * but one property read per file created.
     */
    public static final String DISK_FULL_UNDER = "backfill_safe.disk_full_under";
    public static final String DISK_FULL_AFTER_FILES = "backfill_safe.disk_full_after_files";
    private static final AtomicInteger CREATED = new AtomicInteger();
    private static String countedUnder = null;

    private static void checkSpace(Path p) throws IOException {
      String under = System.getProperty(DISK_FULL_UNDER);
      if (under == null || under.isEmpty()) {
        synchronized (Raw.class) {
          countedUnder = null; // cleared: the next folder named counts from 0 again
        }
        return;
      }
      String folder = under.endsWith("/") ? under : under + "/";
      if (!p.toUri().getPath().startsWith(folder)) {
        return;
      }
      synchronized (Raw.class) {
        if (!under.equals(countedUnder)) {
          countedUnder = under;
          CREATED.set(0);
        }
      }
      if (CREATED.getAndIncrement() >= Integer.getInteger(DISK_FULL_AFTER_FILES, 0)) {
        throw new IOException("No space left on device (simulated: " + DISK_FULL_UNDER + "=" + under
            + "): " + p);
      }
    }

    @Override
    public FSDataOutputStream create(Path f, FsPermission permission, boolean overwrite,
        int bufferSize, short replication, long blockSize, Progressable progress)
        throws IOException {
      checkSpace(f);
      return super.create(f, permission, overwrite, bufferSize, replication, blockSize, progress);
    }

    @Override
    public FSDataOutputStream createNonRecursive(Path f, FsPermission permission,
        EnumSet<CreateFlag> flags, int bufferSize, short replication, long blockSize,
        Progressable progress) throws IOException {
      checkSpace(f);
      return super.createNonRecursive(f, permission, flags, bufferSize, replication, blockSize,
          progress);
    }

    /** Permission bits from the lowest (others execute) to the highest (owner read). */
    private static final PosixFilePermission[] BITS = {
      PosixFilePermission.OTHERS_EXECUTE, PosixFilePermission.OTHERS_WRITE,
      PosixFilePermission.OTHERS_READ, PosixFilePermission.GROUP_EXECUTE,
      PosixFilePermission.GROUP_WRITE, PosixFilePermission.GROUP_READ,
      PosixFilePermission.OWNER_EXECUTE, PosixFilePermission.OWNER_WRITE,
      PosixFilePermission.OWNER_READ,
    };

    @Override
    public void setPermission(Path p, FsPermission permission) throws IOException {
      short mode = permission.toShort();
      Set<PosixFilePermission> set = EnumSet.noneOf(PosixFilePermission.class);
      for (int bit = 0; bit < BITS.length; bit++) {
        if ((mode & (1 << bit)) != 0) {
          set.add(BITS[bit]);
        }
      }
      try {
        Files.setPosixFilePermissions(pathToFile(p).toPath(), set);
      } catch (UnsupportedOperationException notPosix) {
        super.setPermission(p, permission);
      }
    }
  }
}

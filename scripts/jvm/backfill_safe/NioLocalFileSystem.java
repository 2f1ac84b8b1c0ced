package backfill_safe;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.attribute.PosixFilePermission;
import java.util.EnumSet;
import java.util.Set;
import org.apache.hadoop.fs.LocalFileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.fs.RawLocalFileSystem;
import org.apache.hadoop.fs.permission.FsPermission;

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
 */
public class NioLocalFileSystem extends LocalFileSystem {
  public NioLocalFileSystem() {
    super(new Raw());
  }

  /** RawLocalFileSystem with setPermission through java.nio. */
  public static class Raw extends RawLocalFileSystem {
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

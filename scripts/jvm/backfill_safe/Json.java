package backfill_safe;

import java.util.Locale;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/** The few JSON pieces the framework's diagnostics write. */
final class Json {
  private Json() {}

  /** The pattern's first group in {@code text} as a JSON string, or null (also for "null"). */
  static String group(Pattern pattern, String text) {
    Matcher matcher = pattern.matcher(text);
    if (!matcher.find()) {
      return "null";
    }
    String value = matcher.group(1).trim();
    return "null".equals(value.toLowerCase(Locale.ROOT)) ? "null" : quote(value);
  }

  /** A JSON list of strings. */
  static String list(Iterable<String> values) {
    StringBuilder out = new StringBuilder("[");
    for (String value : values) {
      out.append(out.length() == 1 ? "" : ", ").append(quote(value));
    }
    return out.append("]").toString();
  }

  static String quote(String text) {
    StringBuilder out = new StringBuilder("\"");
    for (char c : text.toCharArray()) {
      if (c == '"' || c == '\\') {
        out.append('\\').append(c);
      } else if (c < 0x20) {
        out.append(String.format("\\u%04x", (int) c));
      } else {
        out.append(c);
      }
    }
    return out.append('"').toString();
  }
}

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.apache.kafka.common.config.ConfigDef;
import org.apache.kafka.server.config.AbstractKafkaConfig;
import org.apache.kafka.server.config.DynamicBrokerConfig;
import org.apache.kafka.server.config.DynamicConfig;

/**
 * Prints the facts of every broker config the Kafka on the classpath defines, as the TypeScript
 * module cluster/metadata/kafka-broker-configs.ts: name, type, default, how it may change at run
 * time, whether it is internal, and its validator as Kafka prints it. Names come in the order a
 * HashMap of them iterates, which is the order Kafka's DescribeConfigs lists a broker's configs;
 * then the broker configs that exist only as dynamic ones (the replication throttles), which can
 * change at the cluster default and per broker.
 * No documentation is taken.
 */
public class DumpBrokerConfigs {
  public static void main(String[] args) {
    String version = args.length > 0 ? args[0] : "unknown";
    ConfigDef def = AbstractKafkaConfig.CONFIG_DEF;
    Map<String, String> modes = new HashMap<>(DynamicBrokerConfig.dynamicConfigUpdateModes());
    Map<String, Object> names = new HashMap<>();
    for (String n : def.names()) names.put(n, n);
    Map<String, Object> ordered = new HashMap<>(names);
    List<String> rows = new ArrayList<>();
    Map<String, ConfigDef.ConfigKey> keys = new java.util.LinkedHashMap<>();
    for (String name : ordered.keySet()) keys.put(name, def.configKeys().get(name));
    for (Map.Entry<String, ConfigDef.ConfigKey> e : DynamicConfig.Broker.configKeys().entrySet()) {
      if (!keys.containsKey(e.getKey())) {
        keys.put(e.getKey(), e.getValue());
        modes.putIfAbsent(e.getKey(), "cluster-wide");
      }
    }
    for (String name : keys.keySet()) {
      ConfigDef.ConfigKey k = keys.get(name);
      String dflt;
      if (k.defaultValue == ConfigDef.NO_DEFAULT_VALUE) dflt = "undefined";
      else if (k.defaultValue == null) dflt = "null";
      else dflt = quote(ConfigDef.convertToString(k.defaultValue, k.type));
      String mode = switch (modes.getOrDefault(name, "read-only")) {
        case "cluster-wide" -> "c";
        case "per-broker" -> "b";
        default -> "r";
      };
      String validator = k.validator == null ? "null" : quote(k.validator.toString());
      rows.add("  [" + quote(name) + ", " + quote(k.type.name().toLowerCase()) + ", " + dflt + ", " + quote(mode) + ", "
          + k.internalConfig + ", " + validator + "],");
    }
    StringBuilder out = new StringBuilder();
    out.append("// Generated from Apache Kafka ").append(version).append("'s broker config definitions by\n");
    out.append("// `compat-tests/reference-kafka/run dump-broker-configs`; do not edit.\n");
    out.append("// [name, type, default (undefined: none), mode (r read-only, c cluster-wide, b per-broker), internal, validator]\n");
    out.append("export const KAFKA_BROKER_CONFIGS_VERSION = ").append(quote(version)).append(";\n\n");
    out.append("export const KAFKA_BROKER_CONFIG_ROWS: readonly (readonly [string, string, string | null | undefined, 'r' | 'c' | 'b', boolean, string | null])[] = [\n");
    for (String r : rows) out.append(r).append('\n');
    out.append("];\n");
    System.out.print(out);
  }

  private static String quote(String s) {
    StringBuilder b = new StringBuilder("'");
    for (char c : s.toCharArray()) {
      if (c == '\'' || c == '\\') b.append('\\').append(c);
      else if (c == '\n') b.append("\\n");
      else if (c < 0x20 || c > 0x7e) b.append(String.format("\\u%04x", (int) c));
      else b.append(c);
    }
    return b.append('\'').toString();
  }
}

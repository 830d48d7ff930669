// Prints what Apache Kafka's own down-converter (MemoryRecords.downConvert, the
// conversion Kafka's broker applied to Fetch v0-v3 answers) makes of stored v2
// batches. Reads lines "<name> <toMagic> <firstOffset> <hex of v2 batches>" on
// stdin and writes "<name> <hex of the converted message set>" on stdout.
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.ByteBuffer;
import java.util.HexFormat;
import org.apache.kafka.common.record.MemoryRecords;
import org.apache.kafka.common.utils.Time;

public class DownConvert {
    public static void main(String[] args) throws Exception {
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in));
        HexFormat hex = HexFormat.of();
        for (String line; (line = in.readLine()) != null; ) {
            if (line.isBlank()) continue;
            String[] f = line.trim().split(" ");
            byte magic = Byte.parseByte(f[1]);
            long firstOffset = Long.parseLong(f[2]);
            MemoryRecords records = MemoryRecords.readableRecords(ByteBuffer.wrap(hex.parseHex(f[3])));
            MemoryRecords converted = records.downConvert(magic, firstOffset, Time.SYSTEM).records();
            ByteBuffer b = converted.buffer();
            byte[] out = new byte[b.remaining()];
            b.get(out);
            System.out.println(f[0] + " " + hex.formatHex(out));
        }
    }
}

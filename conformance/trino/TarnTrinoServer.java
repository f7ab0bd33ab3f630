// Main class of the Trino server that conformance/trino/run.sh assembles from
// Maven jars. It does what io.trino.server.TrinoServer does (that class ships
// in trino-server-main, which the Maven registry reachable here does not
// serve): check the Java feature version trino-main was built for, then start
// io.trino.server.Server with trino-main's version. run.sh compiles it once
// into the cache.
import java.io.InputStream;
import java.util.Properties;

public final class TarnTrinoServer
{
    private TarnTrinoServer() {}

    public static void main(String[] args)
            throws Exception
    {
        Properties build = new Properties();
        try (InputStream in = io.trino.server.Server.class.getResourceAsStream("/io/trino/main/build.properties")) {
            if (in != null) {
                build.load(in);
            }
        }
        int required = Integer.parseInt(build.getProperty("target.jdk", "0"));
        if (Runtime.version().feature() < required) {
            System.err.printf("ERROR: Trino requires Java %d+ (found %s)%n", required, Runtime.version());
            System.exit(100);
        }
        String version = io.trino.server.Server.class.getPackage().getImplementationVersion();
        new io.trino.server.Server().start(version == null ? "unknown" : version);
    }
}

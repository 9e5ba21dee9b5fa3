// Launcher for a highload-dht (polis-vk/2024-highload-dht) student service,
// used by scripts/bench-reference.sh. Our own code: it only calls the course's
// public ServiceFactory.Factory / ServiceConfig interfaces, the way the
// course's tests start a node, with a single-node cluster.
//
//   java -cp CLASSES:LIBS ReferenceMain FACTORY-CLASS PORT DATA-DIR
//
// Prints "listening on PORT" once start() has completed, then serves until
// the process is killed (no shutdown hook: the data dir is thrown away).

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;

import ru.vk.itmo.Service;
import ru.vk.itmo.ServiceConfig;
import ru.vk.itmo.test.ServiceFactory;

public final class ReferenceMain {
    private ReferenceMain() {
    }

    public static void main(String[] args) throws Exception {
        if (args.length != 3) {
            System.err.println("usage: ReferenceMain FACTORY-CLASS PORT DATA-DIR");
            System.exit(2);
        }
        int port = Integer.parseInt(args[1]);
        Path dir = Files.createDirectories(Path.of(args[2]));
        String url = "http://localhost:" + port;
        ServiceConfig config = new ServiceConfig(port, url, List.of(url), dir);
        ServiceFactory.Factory factory = (ServiceFactory.Factory)
                Class.forName(args[0]).getDeclaredConstructor().newInstance();
        Service service = factory.create(config);
        service.start().get(30, TimeUnit.SECONDS);
        System.err.println("listening on " + port + " (" + args[0] + ", data in " + dir + ")");
        // The service's threads may all be daemons: keep the JVM alive.
        Thread.currentThread().join();
    }
}

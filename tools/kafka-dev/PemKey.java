// PemKey prints the private key of one entry of a PKCS12 key store as PEM (PKCS#8), which keytool cannot do.
// scripts/kafka-dev.sh runs it as a source file (java PemKey.java STORE ALIAS); the store password is read from
// the KAFKA_DEV_STOREPASS variable, so that it is not on the command line.
//
// Usage: java PemKey.java STORE.p12 ALIAS > key.pem

import java.io.FileInputStream;
import java.security.Key;
import java.security.KeyStore;
import java.util.Base64;

public class PemKey {
	public static void main(String[] args) throws Exception {
		if (args.length != 2) {
			System.err.println("usage: java PemKey.java STORE.p12 ALIAS");
			System.exit(2);
		}
		String pass = System.getenv("KAFKA_DEV_STOREPASS");
		if (pass == null) {
			System.err.println("PemKey: KAFKA_DEV_STOREPASS is not set");
			System.exit(2);
		}
		KeyStore store = KeyStore.getInstance("PKCS12");
		try (FileInputStream in = new FileInputStream(args[0])) {
			store.load(in, pass.toCharArray());
		}
		Key key = store.getKey(args[1], pass.toCharArray());
		if (key == null || !"PKCS#8".equals(key.getFormat())) {
			System.err.println("PemKey: no PKCS#8 private key under alias " + args[1]);
			System.exit(1);
		}
		String body = Base64.getMimeEncoder(64, new byte[] {'\n'}).encodeToString(key.getEncoded());
		System.out.print("-----BEGIN PRIVATE KEY-----\n" + body + "\n-----END PRIVATE KEY-----\n");
	}
}

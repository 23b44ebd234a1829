package console_test

import (
	"context"
	"log"
	"net/http"
	"os"

	"github.com/tickgroup/tickgroup"
	"github.com/tickgroup/tickgroup/console"
)

// An application mounts the console under /tickgroup/ of its own server, next to its own pages, with users of
// an auth file who must sign in to read.
func ExampleNew() {
	f, err := os.Open("/etc/tickgroup/console.users")
	if err != nil {
		log.Fatal(err)
	}
	users, err := console.ReadUsers(f)
	f.Close()
	if err != nil {
		log.Fatal(err)
	}
	auth, err := console.NewAuth(console.Token{}, users)
	if err != nil {
		log.Fatal(err)
	}
	c, err := console.New(console.Config{
		Kafka:        tickgroup.KafkaConfig{Brokers: []string{"kafka-0:9092"}, Namespace: "billing"},
		Prefix:       "/tickgroup",
		AllowedHosts: []string{"ops.example.com"},
		Actions:      true,
		Auth:         auth,
		AuthRead:     true,
	})
	if err != nil {
		log.Fatal(err)
	}
	ctx := context.Background()
	go func() { _ = c.Run(ctx) }()

	mux := http.NewServeMux()
	mux.Handle("/tickgroup/", c)
	mux.HandleFunc("/", func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("the application's own page")) })
	log.Fatal(http.ListenAndServe(":8080", mux))
}

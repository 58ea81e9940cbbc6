// Package webhook reads the signed deliveries other systems send to flrh:
// a shop's "refund requested", a ticket opened, a payment disputed. Each
// becomes a run's input only after its signature is checked and its body
// mapped to the shape the workflow takes.
//
// It is pure: Verifier.Verify takes a delivery's headers, its body, the
// secrets and the time to judge it at, and says who sent what. Making a
// run's input of the body is package jsontemplate's; reading the request,
// finding the secrets and handing the input to a run are the server's.
//
// Nine signing schemes are understood, each as its senders write it:
//
//   - Standard Webhooks (standardwebhooks.com; Svix and the providers on
//     it send the same with svix- headers): webhook-id, webhook-timestamp
//     and webhook-signature over "id.timestamp.body": v1, an HMAC-SHA256
//     under a base64 secret (whsec_…), or v1a, an Ed25519 signature that
//     the sender's public key (whpk_…) verifies, so that the receiver
//     holds nothing that signs. Base64 signatures, several at once while
//     a key rotates.
//   - GitHub: X-Hub-Signature-256, the hex HMAC-SHA256 of the body;
//     X-GitHub-Delivery names the delivery and X-GitHub-Event its event.
//     GitHub signs no timestamp: a replayed delivery is caught by its id
//     alone, which the server keeps with the input it made.
//   - Stripe: Stripe-Signature "t=…,v1=…", the hex HMAC-SHA256 of
//     "t.body"; the event's id and type are the body's own "id" and
//     "type".
//   - Shopify: X-Shopify-Hmac-Sha256, the base64 HMAC-SHA256 of the body;
//     X-Shopify-Webhook-Id and X-Shopify-Topic.
//   - GitLab: X-Gitlab-Token, the secret itself (compared as digests);
//     X-Gitlab-Idempotency-Key (or, from older GitLabs, the event's
//     uuid) and X-Gitlab-Event.
//   - Slack: X-Slack-Signature "v0=…", the hex HMAC-SHA256 of
//     "v0:timestamp:body", and X-Slack-Request-Timestamp. An Events API
//     event is named by its event_id; a slash command's form and an
//     interaction's payload by their trigger_id, and a person waits on
//     the answer (Delivery.Interactive). The url_verification handshake
//     verifies like any request and gives the answer its challenge takes
//     (Delivery.Handshake).
//   - Linear: Linear-Signature, the hex HMAC-SHA256 of the body, which
//     carries the time it was sent (webhookTimestamp, in milliseconds);
//     Linear-Delivery and Linear-Event.
//   - Discord: an application's interactions, X-Signature-Ed25519 over
//     the X-Signature-Timestamp and the body, verified with the
//     application's public key; a PING gives its handshake, a command,
//     button or modal its id and name, and a person waits on the answer.
//   - Twilio: X-Twilio-Signature, the base64 HMAC-SHA1 of the URL Twilio
//     posts to (Verifier.URL) and the form's fields sorted by name; named
//     by I-Twilio-Idempotency-Token, or the message's or call's sid and
//     status. The form is read to be checked: Twilio signs its fields,
//     not its bytes.
//
// Reply writes what a person who sent an interactive delivery (a Slack
// slash command or interaction, a Discord interaction) is answered, as
// their sender shows it.
//
// A timestamp outside the verifier's tolerance (five minutes either way
// unless told otherwise) is refused, like a signature that does not
// match any secret; comparisons take constant time. Every refusal is an
// *Error whose Reason says which check failed and whose Detail never
// repeats a signature or a secret.
package webhook

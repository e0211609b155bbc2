// The dashboard's GraphQL client: queries and mutations over HTTP POST,
// subscriptions over one websocket kept by the graphql-ws client (its
// reconnect and retry), both with the bearer token the page keeps in
// localStorage.
import { createClient, type Client } from "graphql-ws";
import { tokenKey } from "./token";

export class ApiError extends Error {
  constructor(
    message: string,
    public code: string,
    /** the error's extensions (a LOCKED refusal's blockers) */
    public extensions: Record<string, any> = {},
  ) {
    super(message);
  }
}

export function token(): string {
  return localStorage.getItem(tokenKey) || "";
}

export function setToken(t: string) {
  if (t) localStorage.setItem(tokenKey, t);
  else localStorage.removeItem(tokenKey);
}

/** what the page last received from the server, for the benchmark. */
export const traffic = { requests: 0, bytes: 0 };

export async function gql<T = any>(query: string, variables: Record<string, unknown> = {}): Promise<T> {
  // The GraphQL-over-HTTP media type first: errors then come with their
  // HTTP status, and the body is the same.
  const headers: Record<string, string> = {
    "Content-Type": "application/json",
    Accept: "application/graphql-response+json, application/json;q=0.9",
  };
  const t = token();
  if (t) headers.Authorization = "Bearer " + t;
  let r: Response;
  try {
    r = await fetch("/graphql", { method: "POST", headers, body: JSON.stringify({ query, variables }) });
  } catch (e) {
    throw new ApiError("chunklock does not answer: " + (e as Error).message, "UNAVAILABLE");
  }
  let text: string;
  let body: any;
  try {
    text = await r.text();
    body = JSON.parse(text);
  } catch {
    throw new ApiError(`HTTP ${r.status}`, r.status === 401 ? "UNAUTHENTICATED" : "INTERNAL");
  }
  traffic.requests++;
  traffic.bytes += text.length;
  if (body.errors && body.errors.length) {
    const e = body.errors[0];
    throw new ApiError(e.message, (e.extensions && e.extensions.code) || (r.status === 401 ? "UNAUTHENTICATED" : "INTERNAL"), e.extensions || {});
  }
  return body.data as T;
}

export type LiveState = "connecting" | "live" | "down" | "refused";

let client: Client | null = null;

/** connect opens the page's websocket; onState follows it. */
export function connect(onState: (s: LiveState, detail?: string) => void): Client {
  client?.dispose();
  const c = createClient({
    url: location.origin.replace(/^http/, "ws") + "/graphql",
    connectionParams: () => {
      const t = token();
      return t ? { Authorization: "Bearer " + t } : {};
    },
    lazy: false,
    retryAttempts: Infinity,
    // A refused token is not retried: the page asks for another.
    shouldRetry: (e: any) => !(e && (e.code === 4403 || e.code === 4401)),
    on: {
      connected: () => onState("live"),
      closed: (e: any) => onState(e && (e.code === 4403 || e.code === 4401) ? "refused" : "down", e && e.reason),
    },
  });
  client = c;
  return c;
}

/**
 * subscribe runs one subscription on the page's websocket until closed.
 * It keeps the cursor of the last event in the request it sent, so that
 * when graphql-ws subscribes again after a reconnect (it re-sends that same
 * request) the server replays what the page missed (`after`).
 */
export function subscribe(query: string, variables: Record<string, unknown>, onData: (data: any) => void): () => void {
  if (!client) throw new Error("connect first");
  const payload = { query, variables: { ...variables } as Record<string, unknown> };
  return client.subscribe(payload, {
    next: (r: any) => {
      if (!r.data) return;
      for (const v of Object.values(r.data) as any[]) {
        if (v && typeof v.cursor === "string") payload.variables.after = v.cursor;
      }
      onData(r.data);
    },
    error: () => {},
    complete: () => {},
  });
}

/** dropConnection closes the websocket as a network failure would (tests): graphql-ws reconnects. */
export function dropConnection() {
  client?.terminate();
}

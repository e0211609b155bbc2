// The dashboard's GraphQL client: queries and mutations over HTTP POST, the
// events subscription over a websocket (graphql-transport-ws), both with
// the bearer token the page keeps in localStorage.
import { tokenKey } from "./token";

export class ApiError extends Error {
  constructor(message: string, public code: string) {
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

export async function gql<T = any>(query: string, variables: Record<string, unknown> = {}): Promise<T> {
  const headers: Record<string, string> = { "Content-Type": "application/json" };
  const t = token();
  if (t) headers.Authorization = "Bearer " + t;
  let r: Response;
  try {
    r = await fetch("/graphql", { method: "POST", headers, body: JSON.stringify({ query, variables }) });
  } catch (e) {
    throw new ApiError("chunklock does not answer: " + (e as Error).message, "UNAVAILABLE");
  }
  let body: any;
  try {
    body = await r.json();
  } catch {
    throw new ApiError(`HTTP ${r.status}`, r.status === 401 ? "UNAUTHENTICATED" : "INTERNAL");
  }
  if (body.errors && body.errors.length) {
    const e = body.errors[0];
    throw new ApiError(e.message, (e.extensions && e.extensions.code) || (r.status === 401 ? "UNAUTHENTICATED" : "INTERNAL"));
  }
  return body.data as T;
}

export interface Sub {
  close(): void;
}

// subscribe runs one subscription and keeps it running: after a dropped
// connection it reconnects (with backoff) and resumes after the last event
// it received (`after: cursor`), so no event is missed.
export function subscribe(
  query: string,
  variables: Record<string, unknown>,
  onData: (data: any) => void,
  onState: (state: "live" | "down" | "refused", detail?: string) => void,
): Sub {
  let ws: WebSocket | null = null;
  let closed = false;
  let delay = 500;
  let after: string | null = null;
  const connect = () => {
    if (closed) return;
    const url = location.origin.replace(/^http/, "ws") + "/graphql";
    const sock = new WebSocket(url, "graphql-transport-ws");
    ws = sock;
    sock.onopen = () => {
      const t = token();
      sock.send(JSON.stringify({ type: "connection_init", payload: t ? { Authorization: "Bearer " + t } : {} }));
    };
    sock.onmessage = (m) => {
      const msg = JSON.parse(m.data);
      switch (msg.type) {
        case "connection_ack":
          delay = 500;
          sock.send(JSON.stringify({ id: "1", type: "subscribe", payload: { query, variables: after ? { ...variables, after } : variables } }));
          onState("live");
          break;
        case "ping":
          sock.send(JSON.stringify({ type: "pong" }));
          break;
        case "next": {
          const data = msg.payload && msg.payload.data;
          if (data) {
            const c = firstCursor(data);
            if (c) after = c;
            onData(data);
          }
          break;
        }
        case "error":
          onState("down", JSON.stringify(msg.payload));
          break;
      }
    };
    sock.onclose = (ev) => {
      if (closed) return;
      if (ev.code === 4403 || ev.code === 4401) {
        onState("refused", ev.reason);
        return;
      }
      onState("down", ev.reason);
      setTimeout(connect, delay);
      delay = Math.min(delay * 2, 10000);
    };
  };
  connect();
  return {
    close() {
      closed = true;
      if (ws) ws.close();
    },
  };
}

function firstCursor(data: any): string | null {
  for (const k of Object.keys(data)) {
    if (data[k] && typeof data[k].cursor === "string") return data[k].cursor;
  }
  return null;
}

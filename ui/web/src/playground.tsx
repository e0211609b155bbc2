// The GraphiQL playground served at /: bundled with React, GraphiQL and its
// stylesheet (fonts inlined), so it works with no network beyond chunklock.
import React from "react";
import { createRoot } from "react-dom/client";
import { GraphiQL } from "graphiql";
import { createGraphiQLFetcher } from "@graphiql/toolkit";
import "graphiql/graphiql.css";
import { tokenKey } from "./token";

const endpoint = location.origin + "/graphql";
const wsEndpoint = endpoint.replace(/^http/, "ws");
const token = localStorage.getItem(tokenKey) || "";

// The websocket (subscriptions) authenticates with its connection_init
// payload; the headers editor's Authorization is used when it holds one.
const fetcher = createGraphiQLFetcher({
  url: endpoint,
  subscriptionUrl: wsEndpoint,
  wsConnectionParams: token ? { Authorization: "Bearer " + token } : {},
});

// Lines short enough for the editor's half of a 1,280-pixel window.
const defaultQuery = `# chunklock's GraphQL API.
# The Docs pane (top left) lists every field.
# Run with Ctrl-Enter. Subscriptions (events)
# stream over a websocket.
{
  datasets { id description }
  jobs { id inputs output paused }
}
`;

async function start() {
  let headers = token ? JSON.stringify({ Authorization: "Bearer " + token }, null, 2) : "";
  if (!token) {
    // A server with tokens answers 401 without one: show where it goes.
    try {
      const r = await fetch(endpoint, {
        method: "POST",
        headers: { "Content-Type": "application/json" },
        body: JSON.stringify({ query: "{__typename}" }),
      });
      if (r.status === 401) headers = JSON.stringify({ Authorization: "Bearer <your token>" }, null, 2);
    } catch {
      // the editor still loads; the first query shows the error
    }
  }
  // ?query=... opens the editor on that operation (links from the dashboard).
  const query = new URLSearchParams(location.search).get("query") || undefined;
  const root = createRoot(document.getElementById("graphiql")!);
  root.render(
    React.createElement(GraphiQL, {
      fetcher,
      defaultQuery,
      query,
      defaultHeaders: headers,
      isHeadersEditorEnabled: true,
      shouldPersistHeaders: false,
    }),
  );
}

start();

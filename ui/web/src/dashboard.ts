// chunklock's dashboard (/ui): the pipeline, the partition grid, datasets,
// chunks, jobs and live claims, over the GraphQL API with the caller's
// token, live through the events subscription. One module per view under
// views/; lit-html renders the markup (and escapes what it inserts).
import "./dashboard.css";
import { start } from "./app";

start();

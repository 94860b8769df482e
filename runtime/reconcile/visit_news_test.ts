import { expect } from "expect";
import { cause } from "./cause.ts";
import { VisitNews } from "./visit_news.ts";

Deno.test("a child the visit made itself is no news; another one is", () => {
  const news = new VisitNews();
  news.begin("p");
  // The watch beats the create's answer: it is held for the visit to decide.
  expect(news.appeared("p", "c1@5")).toBe(true);
  news.made("p", "c1@5");
  expect(news.end("p")).toEqual([]);

  news.begin("p");
  expect(news.appeared("p", "c2@9")).toBe(true);
  news.made("p", "c1@10");
  expect(news.end("p")).toMatchObject([{ kind: "child", change: "meanwhile" }]);
});

Deno.test("outside a visit, a child that appears is news at once", () => {
  const news = new VisitNews();
  expect(news.appeared("p", "c@1")).toBe(false);
  expect(news.end("p")).toEqual([]);
  news.begin("q");
  expect(news.appeared("p", "c@1")).toBe(false);
});

Deno.test("the echo of a write of ours is no news, once; another change of the child is", () => {
  const news = new VisitNews();
  news.wrote("c@7");
  expect(news.echo("c@7")).toBe(true);
  // The same version again (a relist) and a later one (someone's edit) are news.
  expect(news.echo("c@7")).toBe(false);
  expect(news.echo("c@8")).toBe(false);
});

Deno.test("a create whose echo came during its visit leaves nothing awaiting; one after it is held", () => {
  const news = new VisitNews();
  news.begin("p");
  expect(news.appeared("p", "c1@5")).toBe(true);
  news.made("p", "c1@5");
  news.made("p", "c2@6");
  expect(news.end("p")).toEqual([]);
  expect(news.awaitingEchoes).toBe(1);
  // c2's watch event comes after the visit ended: the echo of its create.
  expect(news.echo("c2@6")).toBe(true);
  expect(news.awaitingEchoes).toBe(0);
});

Deno.test("versions whose echo never comes are forgotten past the bound, oldest first", () => {
  const news = new VisitNews({ maxEchoes: 2 });
  news.wrote("a@1");
  news.wrote("b@1");
  news.wrote("c@1");
  expect(news.awaitingEchoes).toBe(2);
  expect(news.echo("a@1")).toBe(false);
  expect(news.echo("b@1")).toBe(true);
  expect(news.echo("c@1")).toBe(true);
});

Deno.test("the parent's own status, as its visit wrote it, is no news; another status change is", () => {
  const news = new VisitNews();
  const edited = cause("updated", { object: "Ptemplate ns/p", change: "status" });
  // The watch beats the status write's answer: held until the visit ends.
  news.begin("p");
  expect(news.held("p", "p@5", edited)).toBe(true);
  news.made("p", "p@5");
  expect(news.end("p")).toEqual([]);
  expect(news.awaitingEchoes).toBe(0);

  // Someone else's status change meanwhile visits again, for its own cause, after the visit.
  news.begin("p");
  expect(news.held("p", "p@7", edited)).toBe(true);
  news.made("p", "p@8");
  expect(news.end("p")).toEqual([edited]);
  // The answer came first: the echo after the visit is dropped once.
  expect(news.echo("p@8")).toBe(true);

  // Outside a visit nothing is held.
  expect(news.held("p", "p@9", edited)).toBe(false);
});

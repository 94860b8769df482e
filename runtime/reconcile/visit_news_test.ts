import { expect } from "expect";
import { VisitNews } from "./visit_news.ts";

Deno.test("a child the visit made itself is no news; another one is", () => {
  const news = new VisitNews();
  news.begin("p");
  // The watch beats the create's answer: it is held for the visit to decide.
  expect(news.appeared("p", "c1@5")).toBe(true);
  news.made("p", "c1@5");
  expect(news.end("p")).toBe(false);

  news.begin("p");
  expect(news.appeared("p", "c2@9")).toBe(true);
  news.made("p", "c1@10");
  expect(news.end("p")).toBe(true);
});

Deno.test("outside a visit, a child that appears is news at once", () => {
  const news = new VisitNews();
  expect(news.appeared("p", "c@1")).toBe(false);
  expect(news.end("p")).toBe(false);
  news.begin("q");
  expect(news.appeared("p", "c@1")).toBe(false);
});

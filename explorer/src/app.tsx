import { EntryPage } from "./pages/entry-page.js";
import { HomePage } from "./pages/home-page.js";
import { LogPage } from "./pages/log-page.js";
import { NotFoundPage } from "./pages/not-found-page.js";
import { PublisherPage } from "./pages/publisher-page.js";
import { SearchPage } from "./pages/search-page.js";
import { type Route, useLinkFollowing, useRoute } from "./router.js";

/** The frame every page shares: a skip link, the site's navigation, the page, and where the API is. */
export function App() {
  const route = useRoute();
  useLinkFollowing();
  return (
    <>
      <a className="skip-link" href="#main">
        Skip to content
      </a>
      <header className="site-header">
        <a href="/" className="site-name">
          Open Registry
        </a>
        <nav aria-label="Site">
          <ul>
            <li>
              <a href="/search">Search</a>
            </li>
            <li>
              <a href="/log">Transparency log</a>
            </li>
            <li>
              <a href="/docs">API</a>
            </li>
          </ul>
        </nav>
      </header>
      <main id="main" tabIndex={-1}>
        <PageFor route={route} />
      </main>
      <footer className="site-footer">
        <p>
          Every page here reads the registry's public API; the same data is at <a href="/docs">/docs</a>.
        </p>
      </footer>
    </>
  );
}

function PageFor({ route }: { readonly route: Route }) {
  switch (route.page) {
    case "home":
      return <HomePage />;
    case "search":
      return <SearchPage q={route.q} entryType={route.entryType} cursor={route.cursor} limit={route.limit} />;
    case "entry":
      return <EntryPage key={route.did} did={route.did} />;
    case "publisher":
      return <PublisherPage key={route.did} did={route.did} />;
    case "log":
      return <LogPage />;
    default:
      return <NotFoundPage what="page" subject={window.location.pathname} />;
  }
}

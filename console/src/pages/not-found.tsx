import { useTitle } from '../hooks';
import { Link } from '../router';

export function NotFoundPage() {
  useTitle('Not found');
  return (
    <>
      <h1>Page not found</h1>
      <p>
        There is no such page in the console, or your role does not include it. <Link to="/keys">Go to your keys</Link>.
      </p>
    </>
  );
}
